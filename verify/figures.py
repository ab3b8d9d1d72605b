"""The one style of every check's figure, and pyplot imported where a figure is drawn.

pyplot is imported on first use and the backend is never switched here (``python -m verify`` chooses ``Agg`` in
``verify/__main__.py``); every figure is saved to a file and closed (:meth:`verify.context.CheckContext.save_figure`).

The style: Okabe and Ito's colour-blind-safe palette (:data:`COLORS`), theory in black (:data:`THEORY`) as a dense
curve (:func:`theory_curve`), simulation as points with :data:`ERRORBAR_SE` standard-error bars (:func:`mc_points`;
open markers: reported, not judged), log axes labelled with what fits (:func:`tidy_log_axis`), each panel's key
numbers and verdict in a box (:func:`key_numbers`), the settings in the title (:func:`settings`).  A figure function
is decorated with :func:`paper_figure` (it draws inside :func:`style`) and creates its panels with :func:`subplots`."""

from __future__ import annotations

import collections
import contextlib
import functools
import math
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np


#: Okabe & Ito (2008), "Color Universal Design": distinguishable with every common colour-vision deficiency
OKABE_ITO = {"black": "#000000", "orange": "#E69F00", "sky": "#56B4E9", "green": "#009E73", "yellow": "#F0E442",
             "blue": "#0072B2", "vermillion": "#D55E00", "purple": "#CC79A7"}
#: series colours in order (yellow last: weak on white)
COLORS = tuple(OKABE_ITO[k] for k in ("blue", "vermillion", "green", "orange", "purple", "sky", "black", "yellow"))
#: the colour of theory curves
THEORY = OKABE_ITO["black"]
#: the colour of each verdict / outcome
VERDICT_COLORS = {"PASS": OKABE_ITO["green"], "FAIL": OKABE_ITO["vermillion"], "INCONCLUSIVE": OKABE_ITO["orange"],
                  "INFO": "#555555", "NOT JUDGED": "#777777"}
#: font sizes (points) of the figures
FONT = {"base": 9.0, "tick": 8.0, "legend": 7.5, "title": 9.5, "suptitle": 10.5, "note": 7.5}
#: error bars are +- this many standard errors in every figure
ERRORBAR_SE = 3

_STYLE = {
    "font.size": FONT["base"], "axes.titlesize": FONT["title"], "axes.labelsize": FONT["base"],
    "xtick.labelsize": FONT["tick"], "ytick.labelsize": FONT["tick"], "legend.fontsize": FONT["legend"],
    "figure.titlesize": FONT["suptitle"], "legend.framealpha": 0.9, "legend.borderaxespad": 0.4,
    "legend.handlelength": 1.8, "errorbar.capsize": 2.0, "lines.markersize": 4.5, "lines.linewidth": 1.4,
    "axes.formatter.use_mathtext": True, "axes.formatter.limits": (-3, 4), "figure.constrained_layout.use": True,
    "axes.titlelocation": "center", "savefig.facecolor": "white",
}


def pyplot() -> Any:
    """``matplotlib.pyplot``, imported on first use."""
    import matplotlib.pyplot as plt

    return plt


# ------------------------------------------------------------------------------------------ style
@contextlib.contextmanager
def style() -> Iterator[None]:
    """Matplotlib settings of the report's figures (font sizes, palette, constrained layout) for a ``with`` block."""
    from cycler import cycler

    with pyplot().rc_context({**_STYLE, "axes.prop_cycle": cycler(color=list(COLORS))}):
        yield


def paper_figure(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator of a check's ``figure(design, prediction, measurement)``: it draws inside :func:`style` and labels
    every base-10 log axis with the ticks that fit (:func:`tidy_log_axis`)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with style():
            out = func(*args, **kwargs)
            for fig in out.values() if isinstance(out, dict) else [out]:  # base-10 log axes: labels that fit
                for ax in fig.axes:
                    for name in "xy":
                        if getattr(getattr(ax, f"{name}axis").get_transform(), "base", None) == 10:
                            tidy_log_axis(ax, name)
        return out

    return wrapper


def subplots(nrows: int = 1, ncols: int = 1, *, panel: tuple[float, float] = (3.6, 2.9), extra: float = 1.0,
             **kwargs: Any) -> tuple[Any, np.ndarray]:
    """A figure of ``nrows x ncols`` panels of ``panel`` inches each, ``extra`` inches more height for the title and a
    legend under the panels (constrained layout); the axes as a 2-d array.

    ``kwargs``: of :func:`matplotlib.pyplot.subplots` (``sharex``, ``height_ratios``, ...).
    """
    fig, axes = pyplot().subplots(nrows, ncols, figsize=(panel[0] * ncols, panel[1] * nrows + extra), squeeze=False,
                                  layout="constrained", **kwargs)
    for ax in axes.flat:  # tick label size and a light grid fixed on the axes (ticks made at save time keep them)
        ax.tick_params(which="both", labelsize=FONT["tick"])
        ax.grid(True, which="major", color="#dddddd", lw=0.5)
        ax.set_axisbelow(True)
    return fig, axes


def suptitle(fig: Any, check_id: str, what: str, setting: str = "", verdict: str | None = None) -> None:
    """``"<id>: <what>  [<verdict>]"`` over ``setting`` (the settings line, wrapped to the figure's width)."""
    import textwrap

    head = f"{check_id}: {what}" + (f"  [{verdict}]" if verdict else "")
    width = max(40, int(fig.get_figwidth() * 72 / (0.5 * FONT["base"])))
    body = "\n".join(textwrap.wrap(setting, width)) if setting else ""
    fig.suptitle(head + (f"\n{body}" if body else ""), fontsize=FONT["suptitle"])


def headroom(ax: Any, frac: float) -> None:
    """Raise the top of the y range so the data fill the lower ``1 - frac`` of the panel (room for a key box)."""
    lo, hi = ax.get_ylim()
    if ax.get_yscale() == "log":
        a, b = math.log10(lo), math.log10(hi)
        ax.set_ylim(lo, 10 ** (a + (b - a) / (1 - frac)))
    else:
        ax.set_ylim(lo, lo + (hi - lo) / (1 - frac))


_SYMBOLS = {"n": "n", "p": "p", "c": "p/n", "sigma": "σ", "K": "K", "snr": "‖μ‖²", "gamma": "γ", "M": "M",
            "N": "N", "d": "d", "r": "r", "P": "P", "beta": "β", "trials": "trials", "kappa": "κ"}


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, (list, tuple)):
        return "{" + ", ".join(_fmt(x) for x in v) + "}"
    return str(v)


def settings(**values: Any) -> str:
    """``"n = 256, p/n = 4, σ = 0.0015"``: the settings of a figure, names as symbols (``c`` is ``p/n``)."""
    return ", ".join(f"{_SYMBOLS.get(k, k)} = {_fmt(v)}" for k, v in values.items())


# ------------------------------------------------------------------------------------------ series
def dense_grid(x: Sequence[float], *, log: bool = True, per_decade: int = 40, n_min: int = 60,
               pad: float = 0.0) -> np.ndarray:
    """A dense grid over the range of ``x`` for a theory curve, the values of ``x`` included (the curve passes through
    every simulated abscissa).

    Parameters
    ----------
    x : the simulated abscissae.
    log : geometric grid (``per_decade`` points a decade, at least ``n_min``) or linear (``n_min`` points).
    pad : widen the range by this many decades (log) or this fraction of the range (linear) on each side.
    """
    x = np.asarray(x, dtype=float).ravel()
    lo, hi = float(np.min(x)), float(np.max(x))
    if log:
        a, b = math.log10(lo) - pad, math.log10(hi) + pad
        grid = np.logspace(a, b, max(n_min, int(math.ceil((b - a) * per_decade)) + 1))
    else:
        w = hi - lo
        grid = np.linspace(lo - pad * w, hi + pad * w, n_min)
    return np.unique(np.concatenate([grid, x]))


def theory_curve(ax: Any, x: Sequence[float], f: Callable[[np.ndarray], Any], *, label: str = "theory",
                 color: str = THEORY, grid: np.ndarray | None = None, **kwargs: Any) -> tuple[np.ndarray, np.ndarray]:
    """Plot the theory ``f`` on a dense grid over ``x`` and return the curve; ``grid``: the abscissae instead (default
    ``dense_grid(x, n_min=30)``); ``kwargs``: of ``ax.plot``."""
    xd = dense_grid(x, n_min=30) if grid is None else np.asarray(grid, dtype=float)
    yd = np.asarray(f(xd), dtype=float).reshape(xd.shape)
    kwargs.setdefault("lw", 1.4)
    kwargs.setdefault("ls", "-")
    ax.plot(xd, yd, color=color, label=label, zorder=2, **kwargs)
    return xd, yd


def mc_points(ax: Any, x: Sequence[float], y: Sequence[float], se: Sequence[float] | None, *, label: str,
              color: str, marker: str = "o", filled: bool | Sequence[bool] = True,
              xse: Sequence[float] | None = None) -> None:
    """Simulation points with ``+- ERRORBAR_SE`` standard-error bars (``se`` along y, ``xse`` along x).

    ``filled``: for all points or one per point; open markers are points reported, not judged (or a second series, the
    smaller of two sizes). The label goes to the filled points (to the open ones when none is filled).
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    se, xse = (None if v is None else np.asarray(v, dtype=float) for v in (se, xse))
    mask = np.full(x.shape, bool(filled)) if isinstance(filled, (bool, np.bool_)) else np.asarray(filled, dtype=bool)
    yerr = None if se is None else ERRORBAR_SE * se
    xerr = None if xse is None else ERRORBAR_SE * xse
    for sel, full, lab in ((mask, True, label), (~mask, False, "_nolegend_" if mask.any() else label)):
        if not sel.any():
            continue
        ax.errorbar(x[sel], y[sel], None if yerr is None else yerr[sel], None if xerr is None else xerr[sel],
                    fmt=marker, color=color, ecolor=color, mfc=color if full else "white", mec=color, label=lab,
                    elinewidth=1.0, ms=4.5, zorder=3)


def proxy(label: str, *, color: str = "#444444", marker: str | None = "o", ls: str = "none",
          mfc: str | None = None, **kwargs: Any) -> Any:
    """A legend entry that is not a drawn series (a marker or line style explained in words)."""
    from matplotlib.lines import Line2D

    return Line2D([], [], color=color, marker=marker, ls=ls, mfc=color if mfc is None else mfc, mec=color,
                  label=label, **kwargs)


def not_judged_handle(label: str = "open marker: reported, not judged") -> Any:
    """The legend entry of open markers (points outside the judged regime)."""
    return proxy(label, mfc="white")


def legend(ax: Any, *, extra: Iterable[Any] = (), loc: str = "best", outside: bool = False,
           axes: Sequence[Any] | None = None, **kwargs: Any) -> Any:
    """The legend of the labelled series of ``ax`` and the ``extra`` proxy entries (:func:`proxy`); ``outside``: one
    figure legend under the panels with the series of ``axes`` (default: every panel), each label once."""
    axes = (list(axes) if axes is not None else ax.figure.axes) if outside else [ax]
    entries: dict[str, Any] = {}
    for a in axes:
        for h, lab in zip(*a.get_legend_handles_labels()):
            entries.setdefault(lab, h)
    for h in extra:
        entries.setdefault(h.get_label(), h)
    kwargs.setdefault("fontsize", FONT["legend"])
    if outside:
        kwargs.setdefault("ncol", min(3, len(entries)))
        return ax.figure.legend(list(entries.values()), list(entries), loc="outside lower center", **kwargs)
    return ax.legend(list(entries.values()), list(entries), loc=loc, **kwargs)


# ------------------------------------------------------------------------------------------ verdicts, numbers
def outcome_text(comparisons: Sequence[Any]) -> str:
    """``"30/30 PASS"`` or ``"2 PASS, 1 INCONCLUSIVE of 3"``: the outcomes of judged comparisons."""
    n = len(comparisons)
    counts = collections.Counter(c.outcome for c in comparisons)
    if len(counts) == 1:
        return f"{n}/{n} {next(iter(counts))}"
    return ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) + f" of {n}"


def worst_outcome(comparisons: Sequence[Any]) -> str | None:
    """FAIL over INCONCLUSIVE over PASS among judged comparisons (``None`` for none): a panel's outcome."""
    outs = {c.outcome for c in comparisons}
    return next((o for o in ("FAIL", "INCONCLUSIVE", "PASS") if o in outs), None)


_LOCS = {"upper left": (0.03, 0.97, "left", "top"), "upper right": (0.97, 0.97, "right", "top"),
         "lower left": (0.03, 0.03, "left", "bottom"), "lower right": (0.97, 0.03, "right", "bottom"),
         "upper center": (0.5, 0.97, "center", "top"), "lower center": (0.5, 0.03, "center", "bottom"),
         "center left": (0.03, 0.5, "left", "center"), "center right": (0.97, 0.5, "right", "center")}


def _data_points(ax: Any) -> np.ndarray:
    """Every drawn data vertex of ``ax`` (lines, markers, error-bar ends, scatter points) in axes coordinates."""
    ax.get_xlim(), ax.get_ylim()  # settle autoscaling before transforming
    pts = [np.column_stack([np.asarray(ln.get_xdata(), float), np.asarray(ln.get_ydata(), float)])
           for ln in ax.lines if np.size(ln.get_xdata()) and ln.get_transform() == ax.transData]
    for c in ax.collections:
        if hasattr(c, "get_segments") and c.get_segments():
            pts += [np.asarray(seg, float) for seg in c.get_segments()]
        elif hasattr(c, "get_offsets") and len(c.get_offsets()):
            pts.append(np.asarray(c.get_offsets(), float))
    if not pts:
        return np.zeros((0, 2))
    xy = np.concatenate(pts)
    with np.errstate(all="ignore"):
        out = ax.transAxes.inverted().transform(ax.transData.transform(xy))
    return out[np.all(np.isfinite(out), axis=1)]


def _best_loc(ax: Any, lines: Sequence[str], fontsize: float) -> tuple[str, int, float]:
    """The corner (or edge centre) of the panel where a key box covers the fewest data vertices, their number,
    and the box's height as a fraction of the panel."""
    pts = _data_points(ax)
    box = ax.get_position()  # the key box's estimated width and height, as fractions of the panel
    w_pt, h_pt = box.width * ax.figure.get_figwidth() * 72, box.height * ax.figure.get_figheight() * 72
    w = 1.1 * ((max(len(s) for s in lines) * 0.55 + 1.5) * fontsize) / max(w_pt, 1.0)
    h = 1.1 * ((len(lines) * 1.3 + 0.8) * fontsize) / max(h_pt, 1.0)
    best, best_n = "upper left", -1
    for loc, (x, y, ha, va) in _LOCS.items():
        x0 = {"left": x, "right": x - w, "center": x - w / 2}[ha]
        y0 = {"bottom": y, "top": y - h, "center": y - h / 2}[va]
        n = int(np.sum((pts[:, 0] >= x0) & (pts[:, 0] <= x0 + w) & (pts[:, 1] >= y0) & (pts[:, 1] <= y0 + h)))
        if best_n < 0 or n < best_n:
            best, best_n = loc, n
    return best, best_n, h


def key_numbers(ax: Any, lines: Sequence[str], *, verdict: str | None = None, loc: str = "best") -> Any:
    """A box of key numbers on the panel (one per line), framed in the colour of ``verdict`` (its first line).

    ``loc="best"``: where it hides the fewest data (call it once the panel is drawn); where every place hides some, the
    y range is raised (:func:`headroom`).
    """
    lines = list(lines)
    fontsize = FONT["note"]
    all_lines = ([verdict] if verdict else []) + list(lines)
    if loc == "best":
        loc, hidden, h = _best_loc(ax, all_lines, fontsize)
        if hidden:
            headroom(ax, min(0.6, h + 0.06))
            tidy_log_axis(ax, "y")
            loc = _best_loc(ax, all_lines, fontsize)[0]
    x, y, ha, va = _LOCS[loc]
    edge = VERDICT_COLORS.get(verdict or "", "#999999")
    out = ax.text(x, y, "\n".join(all_lines), transform=ax.transAxes, ha=ha, va=va, fontsize=fontsize, zorder=5,
                  linespacing=1.25, multialignment="left",
                  bbox=dict(boxstyle="round,pad=0.3", fc="white", ec=edge, lw=1.4 if verdict else 0.6, alpha=0.92))
    out.set_in_layout(False)  # the box lies on the panel: the layout must not shrink the panel for it
    return out


# ------------------------------------------------------------------------------------------ log axes
def _log_label(v: float, _pos: Any = None) -> str:
    """``0.5``, ``20``, ``2×10⁻⁵``: plain for moderate values, mantissa x power of ten otherwise."""
    if not np.isfinite(v) or v <= 0:
        return ""
    if 1e-2 <= v < 1e4:
        return f"{v:g}"
    e = int(math.floor(math.log10(v) + 1e-9))
    m = v / 10.0**e
    return f"$10^{{{e}}}$" if abs(m - 1) < 1e-6 else f"${m:.2g}\\times10^{{{e}}}$"


def _ticks_in(lo: float, hi: float, subs: tuple[float, ...]) -> list[float]:
    out = []
    for e in range(int(math.floor(math.log10(lo))) - 1, int(math.ceil(math.log10(hi))) + 1):
        out += [s * 10.0**e for s in subs if lo * (1 - 1e-9) <= s * 10.0**e <= hi * (1 + 1e-9)]
    return out


def _fits(ax: Any, name: str, ticks: list[float], cap: int) -> bool:
    """Whether ``ticks`` leave room between their labels (estimated widths along x, line heights along y)."""
    if not 2 <= len(ticks) <= cap:
        return False
    fig = ax.figure
    box = ax.get_position()
    if name == "y":
        length = box.height * fig.get_figheight() * 72
        need = sum(2.6 * FONT["tick"] for _ in ticks)
    else:
        length = box.width * fig.get_figwidth() * 72
        need = sum((0.62 * len(_log_label(t).replace("$", "").replace("\\times", "x")) + 1.5) * FONT["tick"]
                   for t in ticks)
    return need <= 0.8 * length


def tidy_log_axis(ax: Any, which: str = "both") -> None:
    """Label a log axis with what fits: decades (minor labels off); 1-2-5 or 1-3 steps over a short range;
    plain linear ticks under a decade.  Call it once the panel's data are drawn (it reads the limits)."""
    from matplotlib import ticker

    for name in ("x", "y") if which == "both" else (which,):
        axis = getattr(ax, f"{name}axis")
        if axis.get_scale() != "log":
            continue
        lo, hi = sorted(axis.get_view_interval())
        cap = 6 if name == "x" else 7
        axis.set_minor_formatter(ticker.NullFormatter())
        if math.log10(hi / lo) >= 3.0:
            continue  # decades only: the default major labels, no minor labels
        candidates = [_ticks_in(lo, hi, subs) for subs in ((1.0, 2.0, 5.0), (1.0, 3.0), (1.0,))]
        ticks = next((t for t in candidates if _fits(ax, name, t, cap)), candidates[-1])
        axis.set_major_formatter(ticker.FuncFormatter(_log_label))
        if ticks:  # decades (and steps between them where they fit)
            axis.set_major_locator(ticker.FixedLocator(ticks))
        else:  # under a decade with no power of ten inside: a few plain linear ticks
            axis.set_major_locator(ticker.MaxNLocator(nbins=3 if name == "x" else 4, steps=[1, 2, 2.5, 5, 10]))
            axis.set_minor_locator(ticker.NullLocator())
